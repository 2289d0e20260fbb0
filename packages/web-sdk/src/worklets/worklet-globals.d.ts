/** The AudioWorkletGlobalScope, which TypeScript's DOM lib does not declare. */
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
  constructor(options?: unknown);
}
declare function registerProcessor(
  name: string,
  processor: new (options?: any) => AudioWorkletProcessor & {
    process(inputs: Float32Array[][], outputs: Float32Array[][], parameters: Record<string, Float32Array>): boolean;
  },
): void;
/** The context's sample rate (Hz), a global of the worklet scope. */
declare const sampleRate: number;
