"""Input formats, one module each (synthetic, peft, kohya, checkpoint, arrays), yielding dense or
factored matrices through one Source interface; strategies never learn about formats. May import
machine/, bench/, linalg/ and base/."""
