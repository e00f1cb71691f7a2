import type { DailyCount } from '../workspaces/overview-repository.js';

// A bar chart per day drawn on the server as SVG geometry the template writes out: no
// script, no inline style (colours come from classes in the stylesheet).

export interface Bar { x: number; y: number; width: number; height: number; series: 'a' | 'b'; title: string }
export interface Chart { width: number; height: number; base: number; bars: Bar[]; labels: Array<{ x: number; text: string }>; max: number; label: string; rows: DailyCount[]; names: [string, string] }

const WIDTH = 720;
const HEIGHT = 200;
const LEFT = 36;
const BOTTOM = 20;
const TOP = 10;

export function dailyBars(rows: DailyCount[], names: [string, string], label: string): Chart {
  const max = Math.max(1, ...rows.flatMap((row) => [row.a, row.b]));
  const slot = (WIDTH - LEFT) / Math.max(rows.length, 1);
  const barWidth = Math.max(1, slot / 2 - 1);
  const base = HEIGHT - BOTTOM;
  const scale = (value: number) => Math.round(((base - TOP) * value) / max);
  const bars: Bar[] = rows.flatMap((row, index) => (['a', 'b'] as const).map((series, offset) => ({
    x: Math.round(LEFT + index * slot + offset * barWidth),
    y: base - scale(row[series]),
    width: Math.round(barWidth),
    height: scale(row[series]),
    series,
    title: `${row.day}: ${row[series]} ${names[offset]}`,
  })));
  // A date under every seventh day keeps the axis readable at 360 px.
  const labels = rows.flatMap((row, index) => (index % 7 === 0 ? [{ x: Math.round(LEFT + index * slot), text: row.day.slice(5) }] : []));
  return { width: WIDTH, height: HEIGHT, base, bars, labels, max, label, rows, names };
}
