// "1 process", "2 processes" in what the scripts print. They run without the build, so they cannot load the
// core's own (src/proc/platform/log.ts).
'use strict';

/** `n` and the noun: `many` where "s" is not the plural. */
function counted(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

module.exports = { counted };
