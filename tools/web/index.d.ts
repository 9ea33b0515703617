// Types of lockstep-engine (index.js).
export declare const EXIT: { readonly ok: 0; readonly failed: 1; readonly usage: 2; readonly unverified: 4 };
export declare class LockstepError extends Error {}
export declare class Replay {
  readonly code: number;
  readonly out: string[];
  readonly err: string[];
  readonly verdict: string;
  readonly seconds: number;
  readonly ok: boolean;
  readonly startTick: number;
  readonly lastTick: number;
  readonly tick: number;
  readonly hash: string;
  readonly recordedHash: string | null;
  step(): this;
  seek(tick: number): this;
  fields(): Record<string, string>;
  close(): void;
}
export interface OpenOptions {
  name?: string;
  maxStateMb?: number;
  onProgress?: (label: string, done: number, total: number) => void;
}
export declare function openReplay(bytes: Uint8Array | ArrayBuffer, options?: OpenOptions): Promise<Replay>;
