import { runConformance } from "@durable/conformance";
import memory from "./conformance.js";

runConformance(memory);
