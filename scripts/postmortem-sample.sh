#!/usr/bin/env bash
# Puts the briefing the billing-export test last wrote (.data/postmortem-sample.txt, and its word
# count) into docs/postmortems.md. Run the test first:
#   npx jest test/billingExportIncident.test.ts && bash scripts/postmortem-sample.sh
set -euo pipefail
cd "$(dirname "$0")/.."
node - <<'JS'
const fs = require('fs');
const sample = fs.readFileSync('.data/postmortem-sample.txt', 'utf8').trimEnd();
const { words } = JSON.parse(fs.readFileSync('.data/postmortem-sample.json', 'utf8'));
const readme = fs.readFileSync('docs/postmortems.md', 'utf8');
const head = '`.data/postmortem-sample.txt` on every run):\n\n```text\n';
const at = readme.indexOf(head);
if (at < 0) throw new Error('docs/postmortems.md: the sample block of Post-mortem briefings is not where it was');
const end = readme.indexOf('\n```\n', at + head.length);
const before = readme.slice(0, at).replace(/evidence \((\d+|SAMPLE_WORDS) words, written to\n?$/, (m) => m.replace(/\d+|SAMPLE_WORDS/, String(words)));
fs.writeFileSync('docs/postmortems.md', before + head + sample + readme.slice(end));
console.log(`docs/postmortems.md sample: ${words} words`);
JS
