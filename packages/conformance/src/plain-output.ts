/**
 * Imported first by the CLI, before anything loads vitest: its colours are
 * decided once, when it loads, and default to on even for a pipe. A log file
 * or a CI page gets plain text unless FORCE_COLOR asks for colours. The
 * vitest workers inherit the setting through the environment.
 */
if (!process.stdout.isTTY && !("FORCE_COLOR" in process.env)) process.env["NO_COLOR"] = "1";
