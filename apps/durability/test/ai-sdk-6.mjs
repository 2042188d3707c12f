// Loaded with `node --import` before a loop crash child that plays AI SDK 6: every import of
// `ai` or `ai/…`, the child's and @durable/loop/ai-sdk's alike, resolves to the `ai-v6` alias
// (an install of ai@6 beside ai@7), as the loop package's "ai 6" test project does in vitest.
import { register } from "node:module";

const hook = `export function resolve(specifier, context, next) {
  const ai = /^ai(\\/.*)?$/.exec(specifier);
  return next(ai === null ? specifier : "ai-v6" + (ai[1] ?? ""), context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
