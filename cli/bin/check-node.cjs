'use strict';
// Written for any Node, however old: it runs before anything else of the CLI, to say in one line
// what is wrong instead of failing with a syntax error or a stack trace.

/** The oldest Node release line the built CLI supports (its bundle targets it). */
var MINIMUM_MAJOR = 20;

// Answers the one line to print when version (process.versions.node) is too old, else null.
function tooOld(version) {
  var major = parseInt(String(version).split('.')[0], 10);
  if (major >= MINIMUM_MAJOR) return null;
  return 'paddock needs Node.js ' + MINIMUM_MAJOR + ' or newer; this is Node.js ' + version +
    '. Install a current release from https://nodejs.org and run paddock again.';
}

module.exports = { tooOld: tooOld, MINIMUM_MAJOR: MINIMUM_MAJOR };
