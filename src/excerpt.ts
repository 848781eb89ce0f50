/**
 * Bounded echoes: a message that quotes what a client (or an operator) sent quotes at most
 * EXCERPT_MAX characters of it, an ellipsis and the full length marking a cut, so a 500 KB number or
 * member name gives a short error rather than a 500 KB one. Every message that quotes input uses this.
 * A leaf file: the parser (canonical/), the wire (api/, http/) and the configuration all import it.
 */

/** How many characters of an input a message quotes at most. */
export const EXCERPT_MAX = 64

/** `text` when short, else its first `max` characters, "…" and how long it was. */
export const excerpt = (text: string, max = EXCERPT_MAX): string => {
  if (text.length <= max) return text
  // Never cut a surrogate pair in two (the message would hold a lone surrogate).
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max
  return `${text.slice(0, end)}… (${text.length} characters)`
}

/** `JSON.stringify` of a string, bounded: `"abc…" (70000 characters)`. */
export const quoted = (text: string, max = EXCERPT_MAX): string =>
  text.length <= max
    ? JSON.stringify(text)
    : `${JSON.stringify(text.slice(0, /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max))}… (${text.length} characters)`
