package pgwire

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// saslPrep normalizes a password with SASLprep (RFC 4013) as PostgreSQL's
// pg_saslprep and libpq do: non-ASCII spaces become spaces, characters
// "mapped to nothing" are removed, the result is NFKC-normalized, and a
// password that is not valid UTF-8 or holds prohibited characters or
// breaks the bidirectional rule is used as it is.
func saslPrep(p string) string {
	ascii := true
	for i := 0; i < len(p); i++ {
		if p[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii || !utf8.ValidString(p) {
		return p // PostgreSQL skips SASLprep for pure ASCII
	}
	mapped := make([]rune, 0, len(p))
	for _, r := range p {
		switch {
		case mappedToNothing(r):
		case nonASCIISpace(r):
			mapped = append(mapped, ' ')
		default:
			mapped = append(mapped, r)
		}
	}
	out := norm.NFKC.String(string(mapped))
	randAL, l := false, false
	for _, r := range out {
		if prohibited(r) {
			return p
		}
		switch props, _ := bidi.LookupRune(r); props.Class() {
		case bidi.R, bidi.AL:
			randAL = true
		case bidi.L:
			l = true
		}
	}
	if randAL {
		first, _ := utf8.DecodeRuneInString(out)
		last, _ := utf8.DecodeLastRuneInString(out)
		if l || !isRandAL(first) || !isRandAL(last) {
			return p
		}
	}
	return out
}

func isRandAL(r rune) bool {
	props, _ := bidi.LookupRune(r)
	return props.Class() == bidi.R || props.Class() == bidi.AL
}

// mappedToNothing is RFC 3454 table B.1.
func mappedToNothing(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x1806, r >= 0x180B && r <= 0x180D, r >= 0x200B && r <= 0x200D,
		r == 0x2060, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF:
		return true
	}
	return false
}

// nonASCIISpace is RFC 3454 table C.1.2.
func nonASCIISpace(r rune) bool {
	switch {
	case r == 0x00A0, r == 0x1680, r >= 0x2000 && r <= 0x200B, r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

// prohibited is RFC 4013 section 2.3 (tables C.1.2 to C.9) plus code
// points unassigned in the Unicode version Go knows.
func prohibited(r rune) bool {
	switch {
	case nonASCIISpace(r),
		r < 0x20, r == 0x7F, r >= 0x80 && r <= 0x9F, // C.2.1, C.2.2
		r == 0x06DD, r == 0x070F, r == 0x180E, r == 0x200C, r == 0x200D, r == 0x2028, r == 0x2029,
		r >= 0x2060 && r <= 0x2063, r >= 0x206A && r <= 0x206F, r == 0xFEFF, r >= 0xFFF9 && r <= 0xFFFC,
		r >= 0x1D173 && r <= 0x1D17A,
		r >= 0xE000 && r <= 0xF8FF, r >= 0xF0000 && r <= 0xFFFFD, r >= 0x100000 && r <= 0x10FFFD, // C.3
		r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE, // C.4
		r >= 0xD800 && r <= 0xDFFF,                                                     // C.5
		r == 0xFFFD,                                                                    // C.6
		r >= 0x2FF0 && r <= 0x2FFB,                                                     // C.7
		r == 0x0340, r == 0x0341, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, // C.8
		r == 0xE0001, r >= 0xE0020 && r <= 0xE007F: // C.9
		return true
	}
	return !assigned(r)
}

// assigned reports whether r is an assigned code point.
func assigned(r rune) bool {
	for _, t := range unicode.Categories {
		if unicode.Is(t, r) {
			return true
		}
	}
	return false
}
