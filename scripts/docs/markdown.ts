/** Shared by the generated pages (scripts/docs/*.ts). */

/** Text made safe for one cell of a Markdown table: no line breaks, pipes escaped. */
export function cell(text: string): string {
  return text.replace(/\r?\n+/g, ' ').replace(/\|/g, '\\|').trim();
}

/** The line under a generated page's title, saying where it comes from and how to rebuild it. */
export function generatedNotice(source: string): string {
  return `*Generated from ${source} by \`npm run docs\`: change the source, not this page.*`;
}
