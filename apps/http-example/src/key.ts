/** Replace it: every process of the fleet seals and reads checkpoints with the same key. */
export const KEY = process.env["DURABLE_KEY"] ?? "http-example-key-replace-with-32-random-bytes";
