/** Small helpers for readable, aligned command output. */

export const iso = (date: Date | null | undefined): string => (date ? date.toISOString() : '-');

export function seconds(value: number): string {
  if (value < 60) return `${value.toFixed(1)}s`;
  if (value < 3600) return `${Math.floor(value / 60)}m${Math.round(value % 60)}s`;
  return `${Math.floor(value / 3600)}h${Math.floor((value % 3600) / 60)}m`;
}

/** `label   value` lines with the labels padded to one column. */
export function table(rows: Array<[string, string]>, indent = '  '): string[] {
  const width = Math.max(0, ...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${indent}${label.padEnd(width)}  ${value}`);
}

export function counts(record: Record<string, number>): string {
  const entries = Object.entries(record);
  return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k} ${v}`).join(', ');
}
