/**
 * A strict little XML reader for the drill's SVG: enough to prove the output
 * is well-formed (every tag closed in order, attributes quoted, no raw `<`
 * or stray `&` in text) and to look at its elements. It throws on anything
 * a browser's XML parser would refuse for these documents.
 */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITY = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/y;

function decode(raw: string, where: string): string {
  for (let i = raw.indexOf('&'); i !== -1; i = raw.indexOf('&', i + 1)) {
    ENTITY.lastIndex = i;
    if (!ENTITY.test(raw)) throw new Error(`bare & in ${where}: ${raw.slice(i, i + 20)}`);
  }
  return raw
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&amp;/g, '&');
}

export function parseXml(source: string): XmlElement {
  const root: XmlElement = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlElement[] = [root];
  const tag = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*"[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  while (i < source.length) {
    const lt = source.indexOf('<', i);
    const text = source.slice(i, lt === -1 ? source.length : lt);
    if (text.includes('>')) throw new Error(`raw > in text near: ${text.slice(0, 40)}`);
    stack.at(-1)!.text += decode(text, 'text');
    if (lt === -1) break;
    tag.lastIndex = lt;
    const m = tag.exec(source);
    if (!m) throw new Error(`malformed tag at ${lt}: ${source.slice(lt, lt + 60)}`);
    const [, closing, name, rawAttrs, selfClosing] = m as unknown as [string, string, string, string, string];
    if (closing) {
      const open = stack.pop();
      if (!open || open.name !== name || stack.length === 0) throw new Error(`</${name}> closes <${open?.name}>`);
    } else {
      const attrs: Record<string, string> = {};
      for (const a of rawAttrs.matchAll(/([\w:.-]+)\s*=\s*"([^"]*)"/g)) {
        if (a[1]! in attrs) throw new Error(`duplicate attribute ${a[1]} on <${name}>`);
        attrs[a[1]!] = decode(a[2]!, `attribute ${a[1]}`);
      }
      const element: XmlElement = { name, attrs, children: [], text: '' };
      stack.at(-1)!.children.push(element);
      if (!selfClosing) stack.push(element);
    }
    i = tag.lastIndex;
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack.at(-1)!.name}>`);
  if (root.children.length !== 1 || root.text.trim() !== '') throw new Error('a document has exactly one root element');
  return root.children[0]!;
}

export function findAll(element: XmlElement, match: (e: XmlElement) => boolean): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    if (match(e)) found.push(e);
    e.children.forEach(walk);
  };
  walk(element);
  return found;
}
