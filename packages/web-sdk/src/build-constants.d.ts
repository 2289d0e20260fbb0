/** Bundled AudioWorklet sources, injected by scripts/build-web.ts (esbuild `define`). */
declare const __SWITCHBOARD_CAPTURE_WORKLET__: string;
declare const __SWITCHBOARD_PLAYBACK_WORKLET__: string;
