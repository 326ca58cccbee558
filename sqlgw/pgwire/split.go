package pgwire

import "strings"

// asciiSpace is what PostgreSQL's lexer takes as white space.
const asciiSpace = " \t\n\r\f\v"

// SplitStatements splits a simple-query string into its statements at
// top-level semicolons, as PostgreSQL's lexer would: semicolons inside
// '...' and E'...' strings, "..." identifiers, $tag$...$tag$ bodies,
// -- and (nested) /* */ comments do not split. standard_conforming_strings
// is always on, so a backslash escapes only inside E'...'. Statements that
// hold nothing but white space and comments are dropped; the others are
// returned trimmed of surrounding (ASCII) white space. An unterminated string or
// comment runs to the end of the text (the Engine reports the error).
func SplitStatements(sql string) []string {
	var out []string
	start := 0
	content := false // the current statement has a token
	emit := func(end int) {
		if content {
			out = append(out, strings.Trim(sql[start:end], asciiSpace))
		}
		start, content = end+1, false
	}
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == ';':
			emit(i)
			i++
		case c == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*':
			depth := 1
			i += 2
			for i < n && depth > 0 {
				switch {
				case sql[i] == '/' && i+1 < n && sql[i+1] == '*':
					depth++
					i += 2
				case sql[i] == '*' && i+1 < n && sql[i+1] == '/':
					depth--
					i += 2
				default:
					i++
				}
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\'':
			content = true
			escapes := i > 0 && (sql[i-1] == 'e' || sql[i-1] == 'E') && !identChar(sql, i-2)
			i = skipQuoted(sql, i+1, '\'', escapes)
		case c == '"':
			content = true
			i = skipQuoted(sql, i+1, '"', false)
		case c == '$':
			content = true
			if tag, ok := dollarTag(sql, i); ok {
				end := strings.Index(sql[i+len(tag):], tag)
				if end < 0 {
					i = n
				} else {
					i += len(tag) + end + len(tag)
				}
				continue
			}
			i++
		default:
			content = true
			if identStart(c) {
				// Skip a whole identifier or keyword so that a '$' inside it
				// (allowed after the first character) is not a dollar quote.
				for i++; i < n && (identStart(sql[i]) || isDigit(sql[i]) || sql[i] == '$'); i++ {
				}
				continue
			}
			i++
		}
	}
	emit(n)
	return out
}

// skipQuoted returns the index after the closing quote q of a quoted
// section starting at i (just after the opening quote). A doubled quote is
// an escaped quote; with escapes a backslash escapes the next byte.
func skipQuoted(s string, i int, q byte, escapes bool) int {
	for i < len(s) {
		switch {
		case escapes && s[i] == '\\':
			i += 2
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ opening a dollar-quoted string at i.
func dollarTag(s string, i int) (string, bool) {
	if i > 0 && identChar(s, i-1) {
		return "", false
	}
	j := i + 1
	if j < len(s) && isDigit(s[j]) {
		return "", false // a positional parameter $1
	}
	for j < len(s) && (identStart(s[j]) || isDigit(s[j])) {
		j++
	}
	if j < len(s) && s[j] == '$' {
		return s[i : j+1], true
	}
	return "", false
}

func identStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// identChar reports whether s[i] exists and may continue an identifier.
func identChar(s string, i int) bool {
	return i >= 0 && i < len(s) && (identStart(s[i]) || isDigit(s[i]) || s[i] == '$')
}
