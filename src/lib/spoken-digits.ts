/**
 * The words a caller says a digit with, as the recognisers write them: "zero" to "nine", and "oh"
 * for zero. One list for what expects digits (recognition biasing, directed grammars, the end of
 * a turn that is a digit string); extraction also reads homophones ("to", "for"), in its own map.
 */
export const SPOKEN_DIGITS: readonly string[] = ['zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
