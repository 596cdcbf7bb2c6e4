package memorypg

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
)

// columnWeights maps the FTS5 column names memorydb's index has (and a
// query's column filter may name) to the tsvector weight each column
// carries here (migrations/0001_memory.sql).
var columnWeights = map[string]string{"memory_key": "A", "tag_text": "B", "body": "C"}

// tsquery translates q, in the FTS5 query syntax memory.Store.Search
// takes, into PostgreSQL tsquery text for to_tsquery('simple', …): the
// same match set for barewords, "quoted phrases", prefix*, adjacent
// phrases (ANDed, binding tighter than NOT), NOT (tighter than AND), AND
// (tighter than OR), OR, parentheses and a single column filter
// (col:phrase, col:(expr)) — the storetest contract checks these on both
// backends. Text that FTS5 refuses is failure.InvalidArguments, like
// memorydb's; valid FTS5 with no translation here (NEAR, {col …} filters,
// '^', '+') is refused as invalid too.
func tsquery(q string) (string, error) {
	p := &queryParser{src: q}
	out, err := p.or("")
	if err == nil && p.peek().kind != tokEOF {
		err = p.fail("unexpected %q", p.peek().text)
	}
	return out, err
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokString
	tokLParen
	tokRParen
	tokColon
	tokStar
	tokOther
)

type token struct {
	kind tokKind
	text string
}

type queryParser struct {
	src    string
	pos    int
	peeked *token
}

func (p *queryParser) fail(format string, args ...any) error {
	return failure.New(failure.InvalidArguments, "query is not valid FTS5 syntax: "+format+" (put words with special characters in double quotes)", args...).
		WithDetail("query_syntax", "fts5")
}

// bareword reports whether r may be part of an FTS5 bareword.
func bareword(r rune) bool {
	return r >= utf8.RuneSelf || r == '_' || r == 0x1a || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

func (p *queryParser) peek() token {
	if p.peeked == nil {
		t := p.lex()
		p.peeked = &t
	}
	return *p.peeked
}

func (p *queryParser) next() token {
	t := p.peek()
	p.peeked = nil
	return t
}

func (p *queryParser) lex() token {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\n\r", rune(p.src[p.pos])) {
		p.pos++
	}
	if p.pos >= len(p.src) {
		return token{kind: tokEOF}
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	switch {
	case r == '"':
		var b strings.Builder
		i := p.pos + 1
		for i < len(p.src) {
			if p.src[i] == '"' {
				if i+1 < len(p.src) && p.src[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				p.pos = i + 1
				return token{kind: tokString, text: b.String()}
			}
			b.WriteByte(p.src[i])
			i++
		}
		p.pos = len(p.src)
		return token{kind: tokOther, text: `"` + b.String()}
	case bareword(r):
		start := p.pos
		for p.pos < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			if !bareword(r) {
				break
			}
			p.pos += n
		}
		return token{kind: tokWord, text: p.src[start:p.pos]}
	}
	p.pos += n
	switch r {
	case '(':
		return token{kind: tokLParen, text: "("}
	case ')':
		return token{kind: tokRParen, text: ")"}
	case ':':
		return token{kind: tokColon, text: ":"}
	case '*':
		return token{kind: tokStar, text: "*"}
	}
	return token{kind: tokOther, text: string(r)}
}

func keyword(t token, k string) bool { return t.kind == tokWord && t.text == k }

// startsPhrase reports whether t begins a phrase (so that adjacent
// phrases are an implicit AND; FTS5 allows it between phrases only, not
// next to a parenthesized expression).
func startsPhrase(t token) bool {
	return t.kind == tokString || t.kind == tokWord && t.text != "AND" && t.text != "OR" && t.text != "NOT"
}

func (p *queryParser) or(weight string) (string, error) {
	left, err := p.and(weight)
	if err != nil {
		return "", err
	}
	for keyword(p.peek(), "OR") {
		p.next()
		right, err := p.and(weight)
		if err != nil {
			return "", err
		}
		left = "(" + left + " | " + right + ")"
	}
	return left, nil
}

func (p *queryParser) and(weight string) (string, error) {
	left, err := p.not(weight)
	if err != nil {
		return "", err
	}
	for keyword(p.peek(), "AND") {
		p.next()
		right, err := p.not(weight)
		if err != nil {
			return "", err
		}
		left = "(" + left + " & " + right + ")"
	}
	return left, nil
}

func (p *queryParser) not(weight string) (string, error) {
	left, err := p.primary(weight)
	if err != nil {
		return "", err
	}
	for keyword(p.peek(), "NOT") {
		p.next()
		right, err := p.primary(weight)
		if err != nil {
			return "", err
		}
		left = "(" + left + " & !" + right + ")"
	}
	return left, nil
}

// primary is a parenthesized expression (with an optional column
// filter before it) or a list of phrases, ANDed, binding tighter than NOT
// as in FTS5.
func (p *queryParser) primary(weight string) (string, error) {
	if p.peek().kind == tokLParen {
		return p.group(weight)
	}
	var parts []string
	for startsPhrase(p.peek()) {
		t := p.next()
		w := weight
		switch {
		case t.kind == tokWord && t.text == "NEAR" && p.peek().kind == tokLParen:
			return "", p.fail("NEAR is not supported")
		case t.kind == tokWord && p.peek().kind == tokColon:
			cw, ok := columnWeights[t.text]
			if !ok {
				return "", p.fail("no column is named %q", t.text)
			}
			p.next()
			if p.peek().kind == tokLParen && len(parts) == 0 {
				return p.group(cw)
			}
			if t = p.next(); !startsPhrase(t) {
				return "", p.fail("a column filter names no phrase")
			}
			w = cw
		}
		ph, err := p.phrase(t.text, w)
		if err != nil {
			return "", err
		}
		parts = append(parts, ph)
	}
	switch {
	case len(parts) == 1:
		return parts[0], nil
	case len(parts) > 1:
		return "(" + strings.Join(parts, " & ") + ")", nil
	case p.peek().kind == tokEOF:
		return "", p.fail("a term is missing")
	}
	return "", p.fail("unexpected %q", p.peek().text)
}

// group is a parenthesized expression.
func (p *queryParser) group(weight string) (string, error) {
	p.next()
	inner, err := p.or(weight)
	if err != nil {
		return "", err
	}
	if p.next().kind != tokRParen {
		return "", p.fail("a '(' is not closed")
	}
	return inner, nil
}

// phrase is text's words in order (a phrase when more than one), the last
// one a prefix when a '*' follows.
func (p *queryParser) phrase(text, weight string) (string, error) {
	prefix := ""
	if p.peek().kind == tokStar {
		p.next()
		prefix = "*"
	}
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	if len(words) == 0 {
		return "", p.fail("a phrase holds no words")
	}
	for i, w := range words {
		suffix := weight
		if i == len(words)-1 {
			suffix = prefix + weight
		}
		if suffix != "" {
			suffix = ":" + suffix
		}
		words[i] = "'" + strings.ToLower(w) + "'" + suffix
	}
	if len(words) == 1 {
		return words[0], nil
	}
	return "(" + strings.Join(words, " <-> ") + ")", nil
}
