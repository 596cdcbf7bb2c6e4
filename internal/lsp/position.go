package lsp

import (
	"strings"
	"unicode/utf8"
)

// Position encodings a server may negotiate (LSP 3.17 positionEncoding);
// UTF16 is the default when it names none.
const (
	UTF8  = "utf-8"
	UTF16 = "utf-16"
	UTF32 = "utf-32"
)

// splitLines splits text into lines the way LSP counts them: "\n",
// "\r\n" and "\r" each end a line; the terminators are not kept.
func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// units is how many code units of enc the rune r takes.
func units(r rune, enc string) int {
	switch enc {
	case UTF8:
		if r == utf8.RuneError {
			return 1 // an invalid byte stands for itself
		}
		return utf8.RuneLen(r)
	case UTF32:
		return 1
	default:
		if r >= 0x10000 {
			return 2
		}
		return 1
	}
}

// toUnits converts a 1-based column in characters (code points) of line
// to the 0-based character offset in enc's code units. The column may be
// one past the last character (the end of the line); ok is false beyond.
func toUnits(line string, column int, enc string) (offset int, ok bool) {
	if column < 1 {
		return 0, false
	}
	n := 1
	for _, r := range line {
		if n == column {
			return offset, true
		}
		offset += units(r, enc)
		n++
	}
	return offset, n == column
}

// toColumn converts a 0-based offset in enc's code units within line to
// a 1-based column in characters. An offset inside a character gives
// that character's column; one past the end gives the end of the line.
func toColumn(line string, offset int, enc string) int {
	column := 1
	for _, r := range line {
		u := units(r, enc)
		if offset < u {
			return column
		}
		offset -= u
		column++
	}
	return column
}
