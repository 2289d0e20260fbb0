/**
 * An HTML page as Markdown text for the knowledge-base chunker: headings kept as `#` headings (so
 * each chunk carries its section's heading), paragraphs, list items and table rows as blocks, and
 * what is not the page's content left out: scripts, styles, templates, forms, embedded frames and
 * media, and the page's navigation (nav, header, footer, aside and ARIA navigation landmarks).
 * Parsed with htmlparser2 (a forgiving streaming parser: one pass, no DOM kept, linear in the input).
 */
import { Parser } from 'htmlparser2';

/** Elements whose content is never text of the page. */
const DROPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'object', 'embed', 'canvas', 'form', 'select', 'button', 'nav', 'header', 'footer', 'aside', 'dialog']);
/** ARIA roles that mark navigation and page furniture rather than content. */
const DROPPED_ROLES = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'menu', 'menubar', 'dialog']);
/** Elements that end a block of text. */
const BLOCKS = new Set([
  'p', 'div', 'section', 'article', 'main', 'blockquote', 'pre', 'ul', 'ol', 'li', 'dl', 'dt', 'dd', 'table', 'thead', 'tbody', 'tr',
  'figure', 'figcaption', 'address', 'details', 'summary', 'hr', 'body', 'html',
]);
/** Void elements: no end tag, so they never open a dropped region. */
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);

export interface HtmlText {
  /** The page's `<title>`, whitespace collapsed; '' when it has none. */
  title: string;
  /** The page's content as Markdown: `#` headings, blank-line separated blocks, `- ` list items. */
  markdown: string;
  /** The text was cut at `maxChars`. */
  cut: boolean;
}

/**
 * The text of `html` as Markdown, at most `maxChars` characters of it (the rest is dropped and
 * `cut` says so). Text that would read as Markdown structure at a line start (`#`, `>`, `-`) is
 * escaped, so only the page's own headings become headings.
 */
export function htmlToMarkdown(html: string, maxChars: number): HtmlText {
  const blocks: string[] = [];
  let size = 0;
  let cut = false;
  let line = '';
  let heading = 0;
  let listItem = false;
  let preformatted = 0;
  let title = '';
  let inTitle = false;
  /** Depth inside dropped elements: text there is skipped. Each entry is the tag that opened one. */
  const dropped: string[] = [];

  const endBlock = () => {
    const text = preformatted > 0 ? line.replace(/^\n+|\s+$/g, '') : line.replace(/\s+/g, ' ').trim();
    line = '';
    if (text === '' || cut) return;
    let block: string;
    if (heading > 0) block = `${'#'.repeat(heading)} ${text.replace(/\n/g, ' ')}`;
    else if (preformatted > 0) block = '```\n' + text.replaceAll('```', '` ` `') + '\n```';
    else block = `${listItem ? '- ' : ''}${escapeLineStart(text)}`;
    if (size + block.length > maxChars) {
      cut = true;
      return;
    }
    blocks.push(block);
    size += block.length + 2;
  };

  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (dropped.length > 0) {
          if (!VOID.has(name)) dropped.push(name);
          return;
        }
        if (name === 'title') {
          inTitle = true;
          return;
        }
        const role = attributes['role']?.toLowerCase();
        const hidden = 'hidden' in attributes || attributes['aria-hidden'] === 'true';
        if (!VOID.has(name) && (DROPPED.has(name) || (role !== undefined && DROPPED_ROLES.has(role)) || hidden)) {
          endBlock();
          dropped.push(name);
          return;
        }
        const level = /^h([1-6])$/.exec(name)?.[1];
        if (level !== undefined) {
          endBlock();
          heading = Number(level);
        } else if (name === 'br') {
          line += '\n';
        } else if (BLOCKS.has(name)) {
          endBlock();
          if (name === 'li') listItem = true;
          if (name === 'pre') preformatted += 1;
        } else if (name === 'td' || name === 'th') {
          line += ' | ';
        } else if (name === 'img' && attributes['alt']) {
          line += ` ${attributes['alt']} `;
        }
      },
      ontext(text) {
        if (inTitle) title += text;
        else if (dropped.length === 0) line += text;
      },
      onclosetag(name) {
        if (dropped.length > 0) {
          // htmlparser2 closes the elements left open (implied ends) in order, so the stack pops in step.
          if (dropped.at(-1) === name) dropped.pop();
          return;
        }
        if (name === 'title') {
          inTitle = false;
          return;
        }
        if (/^h[1-6]$/.test(name)) {
          endBlock();
          heading = 0;
        } else if (BLOCKS.has(name)) {
          endBlock();
          if (name === 'li') listItem = false;
          if (name === 'pre') preformatted = Math.max(0, preformatted - 1);
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true, recognizeSelfClosing: true },
  );
  parser.write(html);
  parser.end();
  endBlock();
  return { title: title.replace(/\s+/g, ' ').trim(), markdown: blocks.join('\n\n'), cut };
}

/** A line of page text that Markdown would read as a heading, quote, list or fence, escaped. */
function escapeLineStart(text: string): string {
  return text.replace(/^([ \t]*)([#>`~=]|-(?=\s|-))/gm, '$1\\$2');
}
