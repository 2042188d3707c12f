/** A command line that cannot work (an unknown option, a store that does not answer): one line that says what to do. */
export class CommandLineError extends Error {}
