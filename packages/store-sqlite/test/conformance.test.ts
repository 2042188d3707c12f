import { runConformance } from "@durable/conformance";
import sqlite from "./conformance.js";

runConformance(sqlite);
