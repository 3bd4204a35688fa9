#!/usr/bin/env node
'use strict';
// The installed `paddock` executable (the @paddock/cli package): checks the Node it runs on, then
// starts the bundled CLI (dist/paddock.js, built by `npm pack`'s prepack from cli/main.ts).
var message = require('./check-node.cjs').tooOld(process.versions.node);
if (message) {
  process.stderr.write(message + '\n');
  process.exit(1);
}
var path = require('path');
var url = require('url');
import(url.pathToFileURL(path.join(__dirname, '..', 'dist', 'paddock.js')).href).then(
  function (cli) {
    return cli.main(process.argv.slice(2)).then(function (code) {
      process.exitCode = code;
    });
  },
  function (err) {
    process.stderr.write('paddock could not start: ' + (err && err.message ? err.message : String(err)) + '\n');
    process.exitCode = 1;
  }
);
