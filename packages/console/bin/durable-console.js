#!/usr/bin/env node
// The bin, shipped as source so a workspace links it at install, before the build writes dist/.
import "../dist/cli.js";
