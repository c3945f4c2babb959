/** A spawn that could not start: bad arguments or a missing executable. Nothing was started. */
export class SpawnError extends Error {
  constructor(
    message: string,
    readonly code: 'ENOENT' | 'EACCES' | 'EINVAL' | 'ENOTDIR',
  ) {
    super(message);
  }
}
