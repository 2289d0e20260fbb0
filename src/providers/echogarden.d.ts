// The @echogarden WASM packages ship no type declarations; these are the factory shapes we use.
declare module '@echogarden/fvad-wasm' {
  const factory: (moduleArg?: Record<string, unknown>) => Promise<unknown>;
  export default factory;
}
declare module '@echogarden/speex-resampler-wasm' {
  const factory: (moduleArg?: Record<string, unknown>) => Promise<unknown>;
  export default factory;
}
declare module '@echogarden/rnnoise-wasm' {
  const factory: (moduleArg?: Record<string, unknown>) => Promise<unknown>;
  export default factory;
}
