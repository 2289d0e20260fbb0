/** Small building blocks of the dashboard. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

export interface AsyncState<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change; `reload()` runs it again. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): AsyncState<T> {
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: unknown) => live && setState({ data: null, error: messageOf(error), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

export function ErrorBox({ error, id }: { error: string | null; id?: string }) {
  return error ? <div class="error" role="alert" id={id}>{error}</div> : null;
}

export function Loading({ state }: { state: { loading: boolean; error: string | null } }) {
  if (state.error) return <ErrorBox error={state.error} />;
  return state.loading ? <p class="muted">Loading…</p> : null;
}

export function Badge({ value }: { value: string | null | undefined }) {
  return <span class={`badge ${value ?? ''}`}>{value ?? '—'}</span>;
}

export function Card({ title, children, id }: { title?: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" id={id}>
      {title && <h2>{title}</h2>}
      {children}
    </section>
  );
}

export function Json({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  return <pre>{JSON.stringify(value, null, 2)}</pre>;
}

/** Navigates within the single-page app (hash routes keep the server to one page). */
export function go(path: string): void {
  location.hash = `#${path}`;
}
