import { existsSync, readFileSync } from "node:fs";

/**
 * How many transactions the database's WAL file holds since it was last
 * reset: its frames of the current salt that end a commit (a non-zero
 * database size in the frame header). Each is one fsync at `synchronous`
 * FULL, so tests count group commits by the bytes on disk, not by spying on
 * the store. See https://sqlite.org/fileformat.html#the_write_ahead_log.
 */
export function walCommits(path: string): number {
  const wal = `${path}-wal`;
  if (!existsSync(wal)) return 0;
  const bytes = readFileSync(wal);
  if (bytes.length < 32) return 0;
  const pageSize = bytes.readUInt32BE(8);
  const salt = [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= bytes.length; at += 24 + pageSize) {
    // Frames past the last commit of a reset WAL keep an older salt: they are not part of the log.
    if (bytes.readUInt32BE(at + 8) !== salt[0] || bytes.readUInt32BE(at + 12) !== salt[1]) break;
    if (bytes.readUInt32BE(at + 4) !== 0) commits += 1;
  }
  return commits;
}
