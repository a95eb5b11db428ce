import { ErrorCode, KernelError } from '../kernel/index.js';

/** Runs a store call; raw client errors become `committer_unavailable` (never a raw Error). */
export async function storeCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof KernelError) throw error;
    throw new KernelError(ErrorCode.committerUnavailable, `${what} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
