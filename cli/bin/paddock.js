#!/usr/bin/env node
// The `paddock` executable: Node 24 runs the TypeScript sources directly (type stripping).
import { main } from '../main.ts';

process.exitCode = await main(process.argv.slice(2));
