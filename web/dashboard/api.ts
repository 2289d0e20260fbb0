/**
 * The dashboard's REST client: same-origin requests with `Authorization: Bearer <key>`. The key
 * is held here and in the tab's sessionStorage (main.tsx), never in a URL.
 */

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

export class Api {
  readonly #key: string;
  /** Called when the server refuses the key (401), to return to the sign-in form. */
  readonly #onUnauthenticated: () => void;

  constructor(key: string, onUnauthenticated: () => void) {
    this.#key = key;
    this.#onUnauthenticated = onUnauthenticated;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, body);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.raw(method, path, body);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /** A request whose non-2xx answer becomes an ApiError with the server's code and message. */
  async raw(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    if (!response.ok) {
      const json = (await response.json().catch(() => null)) as { code?: string; message?: string } | null;
      if (response.status === 401) this.#onUnauthenticated();
      throw new ApiError(response.status, json?.code ?? 'http_error', json?.message ?? `The server answered ${response.status}.`);
    }
    return response;
  }

  /** A protected file (a recording) as a Blob URL the page can play; revoke it when done. */
  async blobUrl(path: string): Promise<string> {
    const response = await this.raw('GET', path);
    return URL.createObjectURL(await response.blob());
  }
}
