/** What an agent's terminal is told it is, and what is written to it once the agent has ended. */
/** The terminal type when the environment names none: what VS Code's own terminals set. */
export const DEFAULT_TERM = 'xterm-256color';

/** Keyboard protocols off: kitty's progressive enhancement (pop every level, then flags 0) and xterm's modifyOtherKeys. */
const KEYBOARD_PLAIN = '\x1b[<99u\x1b[=0;1u\x1b[>4;0m';

/**
 * Modes a full-screen program may leave on when it is killed: keyboard protocols (VS Code 1.139's terminal honours
 * kitty's: left on, every key reaches the shell as `CSI … u` and the terminal is unusable), back to the normal
 * screen (without moving the cursor; keyboard modes again, since each screen keeps its own), cursor shown, mouse
 * reporting, focus events and bracketed paste off, normal cursor keys and keypad, autowrap on, default colours.
 * Written by the agent terminal (extension) and by `agent-trees run`'s relay when the agent has ended.
 */
export const RESTORE_TERMINAL_MODES =
  KEYBOARD_PLAIN +
  '\x1b[?1047l' +
  KEYBOARD_PLAIN +
  '\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b[?1l\x1b>\x1b[?7h\x1b[0m';
