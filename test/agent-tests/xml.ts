/** A strict little XML reader for the tests (well-formedness, nesting, the five entities): enough to parse a JUnit report. */
export interface XmlNode {
  name: string;
  attrs: Record<string, string>;
  children: XmlNode[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function unescape(text: string): string {
  return text.replace(/&([a-z]+);/g, (all, name: string) => {
    const value = ENTITIES[name];
    if (value === undefined) throw new Error(`unknown entity ${all}`);
    return value;
  });
}

export function parseXml(xml: string): XmlNode {
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, '');
  if (/&(?![a-z]+;)/.test(body)) throw new Error('a bare & in the document');
  const root: XmlNode = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlNode[] = [root];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let at = 0;
  while (at < body.length) {
    token.lastIndex = at;
    const m = token.exec(body);
    if (!m) throw new Error(`not XML at ${at}: ${body.slice(at, at + 40)}`);
    at = token.lastIndex;
    const top = stack[stack.length - 1]!;
    if (m[5] !== undefined) {
      top.text += unescape(m[5]);
      continue;
    }
    const [, closing, name, attrText, selfClosing] = m;
    if (closing) {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText!.matchAll(/([\w:.-]+)="([^"]*)"/g)) attrs[a[1]!] = unescape(a[2]!);
    const node: XmlNode = { name: name!, attrs, children: [], text: '' };
    top.children.push(node);
    if (!selfClosing) stack.push(node);
  }
  if (stack.length !== 1) throw new Error(`<${stack[stack.length - 1]!.name}> is not closed`);
  if (root.children.length !== 1 || root.text.trim()) throw new Error('not one root element');
  return root.children[0]!;
}
