// Opens an anchor in this process's memory for the kit's own run on the memory store: every handle a new one.
import { MemoryRunAnchor } from "@durable/core/store";

export default (): MemoryRunAnchor => new MemoryRunAnchor();
