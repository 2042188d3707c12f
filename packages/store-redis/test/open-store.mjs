// Opens the Redis store in the conformance kit's child processes: the handle is the key prefix.
// Plain JavaScript on the built package, so a child starts without a TypeScript loader;
// the kit refuses to start one while that build is older than src/ (`pnpm build` rebuilds it).
import { createClient } from "redis";
import { RedisCheckpointStore } from "../dist/index.js";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export default (prefix) => new RedisCheckpointStore(() => createClient({ url }), { prefix });
