/** One line of a chart: a name and its points. */
export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

/**
 * A small line chart as SVG text: x on a log2 scale (the N of the contention runs) or, with
 * `linearX`, a linear one (time), y from 0 to `yMax` (1 unless said). Hand-written because it is 40
 * lines and the benchmarks need nothing else from a plotting library.
 */
export function lineChart(
  title: string,
  xLabel: string,
  yLabel: string,
  series: Series[],
  yMax = 1,
  linearX = false,
): string {
  const [width, height, left, right, top, bottom] = [640, 400, 60, 170, 40, 50];
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const scale = linearX ? (x: number) => x : Math.log2;
  const [lo, hi] = [scale(xs[0]!), scale(xs[xs.length - 1]!)];
  const px = (x: number) => left + ((scale(x) - lo) / (hi - lo || 1)) * (width - left - right);
  const py = (y: number) => top + (1 - Math.min(1, Math.max(0, y / yMax))) * (height - top - bottom);
  const text = (x: number, y: number, s: string, anchor = 'middle') =>
    `<text x="${x}" y="${y}" text-anchor="${anchor}" font-family="sans-serif" font-size="12">${s}</text>`;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    text(width / 2, 20, title),
    text((left + width - right) / 2, height - 10, xLabel),
    `<text x="15" y="${height / 2}" transform="rotate(-90 15 ${height / 2})" text-anchor="middle" font-family="sans-serif" font-size="12">${yLabel}</text>`,
  ];
  for (const share of [0, 0.25, 0.5, 0.75, 1]) {
    const y = share * yMax;
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${py(y)}" y2="${py(y)}" stroke="#ddd"/>`);
    parts.push(text(left - 8, py(y) + 4, y.toFixed(2), 'end'));
  }
  const ticks = linearX ? xs.filter((_, i) => i % Math.ceil(xs.length / 10) === 0) : xs;
  for (const x of ticks) parts.push(text(px(x), height - bottom + 18, String(x)));
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const path = s.points
      .map((p, j) => `${j ? 'L' : 'M'}${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`)
      .join(' ');
    parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const p of s.points) parts.push(`<circle cx="${px(p.x)}" cy="${py(p.y)}" r="3" fill="${color}"/>`);
    parts.push(
      `<rect x="${width - right + 15}" y="${top + i * 20}" width="12" height="12" fill="${color}"/>`,
    );
    parts.push(text(width - right + 32, top + i * 20 + 11, s.name, 'start'));
  });
  parts.push('</svg>');
  return parts.join('\n');
}
