/**
 * Knowledge bases (issue 29): an account's documents, cut into chunks that calls retrieve from.
 * The wire shapes follow Retell's knowledge-base API; the bounds are ours and each has its 4xx.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Name, ResourceId, Strict, Text } from './schema-kit.ts';

/** The bounds of knowledge bases; every one has a clear 4xx beyond it (docs/knowledge-bases.md). */
export const KNOWLEDGE_LIMITS = {
  /** Knowledge bases per account (409 knowledge_base_limit_reached beyond). */
  basesPerAccount: 100,
  /** Sources per knowledge base (409 knowledge_base_limit_reached beyond). */
  sourcesPerBase: 200,
  /** Sources in one create or add request (400 beyond). */
  sourcesPerRequest: 50,
  /** Bytes of one text or file source (413 beyond; the whole body is bounded at 1 MB as well). */
  sourceBytes: 768 * 1024,
  /** Bytes of a URL source's document read at most (the source fails beyond). */
  urlBytes: 4 * 1024 * 1024,
  /** Wall time of one URL fetch, redirects included, ms (the source fails beyond). */
  urlTimeoutMs: 20_000,
  /** Redirects a URL fetch follows at most, each checked against the destination policy. */
  urlRedirects: 5,
  /** Characters of an address in knowledge_base_urls (400 beyond). */
  urlChars: 2_048,
  /** Characters of text kept from one HTML or PDF document (the source fails beyond). */
  documentChars: 1_000_000,
  /** Pages of a PDF read at most (the source fails beyond). */
  pdfPages: 500,
  /** Bytes a PDF's compressed streams may inflate to in all (the source fails beyond). */
  pdfInflatedBytes: 64 * 1024 * 1024,
  /** Wall time to read one PDF, ms (the source fails beyond). */
  pdfTimeoutMs: 30_000,
  /** Heap of the worker that reads a PDF, MB (the source fails beyond). */
  pdfHeapMb: 256,
  /** Chunks of one knowledge base: a source that would pass it ends in error (knowledge_base_full). */
  chunksPerBase: 20_000,
  /** Characters of a search query (400 beyond). */
  queryChars: 2_000,
  /** Most chunks one search returns. */
  topK: 20,
} as const;

/**
 * `enable_auto_refresh`: a URL source of such a knowledge base is fetched again once this long has
 * passed since it was last fetched (12 hours); servers look for due sources every
 * AUTO_REFRESH_CHECK_MS, at most AUTO_REFRESH_PER_ROUND at a time.
 */
export const AUTO_REFRESH_INTERVAL_MS = 12 * 60 * 60 * 1000;
export const AUTO_REFRESH_CHECK_MS = 10 * 60 * 1000;
export const AUTO_REFRESH_PER_ROUND = 20;

export const KNOWLEDGE_BASE_STATUSES = ['in_progress', 'complete', 'error'] as const;
export type KnowledgeBaseStatus = (typeof KNOWLEDGE_BASE_STATUSES)[number];
export const SOURCE_TYPES = ['text', 'document', 'url'] as const;
export type KnowledgeSourceType = (typeof SOURCE_TYPES)[number];

/**
 * The document formats a source may hold: a file's chosen by `content_type`, else its name's
 * extension; a URL's by the response's Content-Type, else the path's extension. HTML and PDF are
 * turned into text at ingestion (HTML keeping its headings as Markdown headings).
 */
export const DOCUMENT_FORMATS = ['markdown', 'text', 'html', 'pdf'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

const MEDIA_TYPES: Record<string, DocumentFormat> = {
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
};
const EXTENSIONS: Record<string, DocumentFormat> = {
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  pdf: 'pdf',
};
/** What a file's format may be, for error messages. */
export const FILE_FORMATS_TEXT = 'Markdown (.md, text/markdown), plain text (.txt, text/plain), HTML (.html, text/html) or PDF (.pdf, application/pdf)';

/** The format of a file, or null when it is none we read. */
export function documentFormat(fileName: string, contentType: string | undefined): DocumentFormat | null {
  if (contentType !== undefined) return formatOfMediaType(contentType);
  return formatOfPath(fileName);
}

/**
 * The format of a fetched document: its Content-Type's, except that text/plain, a generic binary
 * type or none defers to the path's extension (servers send Markdown files as text/plain); null
 * when it is none we read.
 */
export function fetchedFormat(contentType: string | null, url: string): DocumentFormat | null {
  const declared = contentType === null ? null : formatOfMediaType(contentType);
  const generic = contentType === null || declared === 'text' || /^application\/(octet-stream|x-download)\b/i.test(contentType);
  if (!generic) return declared;
  let path = '';
  try {
    path = new URL(url).pathname;
  } catch {
    // Not a URL: the declared type alone.
  }
  return formatOfPath(path) ?? declared;
}

function formatOfMediaType(contentType: string): DocumentFormat | null {
  return MEDIA_TYPES[contentType.split(';')[0]!.trim().toLowerCase()] ?? null;
}

function formatOfPath(path: string): DocumentFormat | null {
  const extension = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  return extension === undefined ? null : (EXTENSIONS[extension] ?? null);
}

/** A text source (Retell's `knowledge_base_texts` item). */
export const KnowledgeText = Strict({
  title: Name(256),
  text: Text(KNOWLEDGE_LIMITS.sourceBytes),
});

/**
 * A file source in a JSON body: its name and its bytes in base64. The format comes from
 * `content_type` (text/markdown, text/plain, text/html, application/pdf) or else the name's
 * extension (.md, .markdown, .txt, .html, .htm, .pdf).
 */
export const KnowledgeFile = Strict({
  file_name: Name(256),
  content_type: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  content_base64: Type.String({ maxLength: Math.ceil((KNOWLEDGE_LIMITS.sourceBytes * 4) / 3) + 4, pattern: '^[A-Za-z0-9+/=\\s]*$' }),
});

const sourceLists = {
  knowledge_base_texts: Type.Optional(Type.Array(KnowledgeText, { maxItems: KNOWLEDGE_LIMITS.sourcesPerRequest })),
  knowledge_base_files: Type.Optional(Type.Array(KnowledgeFile, { maxItems: KNOWLEDGE_LIMITS.sourcesPerRequest })),
  knowledge_base_urls: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.urlChars }), {
      maxItems: KNOWLEDGE_LIMITS.sourcesPerRequest,
      description: 'http(s) addresses of documents (HTML, Markdown, plain text or PDF), fetched in the background.',
    }),
  ),
};

export const KnowledgeBaseCreateBody = Strict(
  {
    knowledge_base_name: Name(40),
    ...sourceLists,
    enable_auto_refresh: Type.Optional(Type.Boolean({ description: 'Fetch the URL sources again every 12 hours (default false).' })),
  },
  { title: 'CreateKnowledgeBaseRequest' },
);
export type KnowledgeBaseCreateInput = Static<typeof KnowledgeBaseCreateBody>;

export const KnowledgeSourcesAddBody = Strict(sourceLists, { title: 'AddKnowledgeBaseSourcesRequest' });
export type KnowledgeSourcesAddInput = Static<typeof KnowledgeSourcesAddBody>;

export const KnowledgeSearchBody = Strict(
  {
    query: Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.queryChars }),
    top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: KNOWLEDGE_LIMITS.topK })),
  },
  { title: 'SearchKnowledgeBaseRequest' },
);
export type KnowledgeSearchInput = Static<typeof KnowledgeSearchBody>;

/** Retrieval settings of an engine (Retell's `kb_config`). */
export const KbConfig = Strict({
  top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: KNOWLEDGE_LIMITS.topK, description: 'Chunks retrieved per turn (default 3).' })),
  filter_score: Type.Optional(
    Type.Number({ minimum: 0, maximum: 1, description: 'Chunks scoring below this are left out (default 0: every chunk that matches).' }),
  ),
});
export type KbConfig = Static<typeof KbConfig>;
/** An engine's knowledge bases (Retell's `knowledge_base_ids`): ids of the account's knowledge bases. */
export const KnowledgeBaseIds = Type.Array(ResourceId, { maxItems: 10, uniqueItems: true });
export const DEFAULT_TOP_K = 3;

/** One chunk a search found: `score` in (0, 1], higher is more relevant. */
export interface RetrievedChunk {
  chunk_id: number;
  source_id: string;
  /** The headings above the chunk, outermost first, joined with " > "; '' when none. */
  heading: string;
  text: string;
  score: number;
}

/** A chunk as retrieval hands it to a call: with the knowledge base it belongs to. */
export interface KnowledgePassage extends RetrievedChunk {
  knowledge_base_id: string;
}

/** Most terms of a query that retrieval uses (the first ones). */
export const MAX_QUERY_TERMS = 32;

/**
 * Words that say nothing about what a question is about; both stores leave them out of a search.
 * Beside the modal verbs, quantifiers and possessive pronouns of the usual list (can, could,
 * should, will, would; few, more, most, some, any, each; yours, hers, ours, theirs), the rest of
 * those closed classes: may, might, must, shall; many, much; mine (asked as often, and matching
 * chunks by accident otherwise: "how many", "may I").
 */
export const STOPWORDS = new Set(
  ('a about above after again all am an and any are as at be because been before being below between both but by can could did do does doing ' +
    "down during each few for from further had has have having he her here hers him his how i if in into is it its itself just me more most my " +
    'no nor not now of off on once only or other our ours out over own same she should so some such than that the their theirs them then there ' +
    'these they this those through to too under until up very was we were what when where which while who whom why will with would you your yours ' +
    'yourself hi hello please thanks thank okay ok um uh yes yeah tell know want like need get ' +
    'may might must shall many much mine')
    .split(' '),
);

/**
 * The terms a search looks for in `text`: lower-cased words (letters and digits), stopwords left
 * out, each once, at most MAX_QUERY_TERMS. Empty when nothing is left (the search finds nothing).
 */
export function queryTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0];
    if (word.length > 64 || STOPWORDS.has(word)) continue;
    terms.add(word);
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms];
}
