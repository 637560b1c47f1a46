// Secrets from files (Docker and Kubernetes secrets): NAME_FILE names a file whose contents are NAME,
// so a password in LOCK_SERVICE_URL or the model key need not sit in the environment or compose file.
import fs from 'node:fs';
import { InvalidConfigurationError } from '../policy/errors';

/** The variables that may come from a file. */
export const SECRET_FILE_VARIABLES = ['LOCK_SERVICE_URL', 'ANTHROPIC_API_KEY'] as const;

/**
 * `env` with each NAME_FILE read into NAME (trailing newline dropped). Setting both NAME and
 * NAME_FILE, or a file that cannot be read or is empty, throws InvalidConfiguration naming the
 * variable; never the contents.
 */
export function withSecretFiles(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  const problems: string[] = [];
  for (const name of SECRET_FILE_VARIABLES) {
    const file = env[`${name}_FILE`];
    if (!file) continue;
    if (env[name]) {
      problems.push(`${name}_FILE: set beside ${name}; set one of them`);
      continue;
    }
    try {
      out[name] = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
      if (!out[name]) problems.push(`${name}_FILE: ${file} is empty`);
    } catch (error) {
      problems.push(
        `${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    delete out[`${name}_FILE`];
  }
  if (problems.length) throw new InvalidConfigurationError(problems);
  return out;
}
