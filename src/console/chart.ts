// A bar chart per day drawn on the server as SVG geometry the template writes out: no
// script, no inline style (colours come from classes in the stylesheet).

/** One series of a chart: the row's field it draws, its name in the legend, and its colour's class. */
export interface Series<K extends string> {
  key: K;
  name: string;
  colour: string;
}
export interface Bar {
  x: number;
  y: number;
  width: number;
  height: number;
  colour: string;
  title: string;
}
export interface Chart {
  width: number;
  height: number;
  base: number;
  bars: Bar[];
  labels: Array<{ x: number; text: string }>;
  max: number;
  label: string;
  series: Array<{ name: string; colour: string }>;
  /** The figures as a table: each day's value per series, in the series' order. */
  rows: Array<{ day: string; values: number[] }>;
}

const WIDTH = 720;
const HEIGHT = 200;
const LEFT = 36;
const BOTTOM = 20;
const TOP = 10;

export function dailyBars<K extends string>(days: ReadonlyArray<{ day: string } & Record<K, number>>, series: ReadonlyArray<Series<K>>, label: string): Chart {
  const rows = days.map((day) => ({ day: day.day, values: series.map(({ key }) => day[key]) }));
  const max = Math.max(1, ...rows.flatMap((row) => row.values));
  const slot = (WIDTH - LEFT) / Math.max(rows.length, 1);
  const barWidth = Math.max(1, slot / series.length - 1);
  const base = HEIGHT - BOTTOM;
  const scale = (value: number) => Math.round(((base - TOP) * value) / max);
  const bars: Bar[] = rows.flatMap((row, index) =>
    series.map(({ name, colour }, offset) => ({
      x: Math.round(LEFT + index * slot + offset * barWidth),
      y: base - scale(row.values[offset]!),
      width: Math.round(barWidth),
      height: scale(row.values[offset]!),
      colour,
      title: `${row.day}: ${row.values[offset]} ${name}`,
    })),
  );
  // A date under every seventh day keeps the axis readable at 360 px.
  const labels = rows.flatMap((row, index) => (index % 7 === 0 ? [{ x: Math.round(LEFT + index * slot), text: row.day.slice(5) }] : []));
  return { width: WIDTH, height: HEIGHT, base, bars, labels, max, label, rows, series: series.map(({ name, colour }) => ({ name, colour })) };
}
