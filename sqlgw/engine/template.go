package engine

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Query templates of the custom analysis rule (docs/cleanrooms.md). In a
// collaboration a member runs an approved template with
//
//	EXECUTE TEMPLATE name (param => literal, ...)
//
// which the engine parses itself (parseExecuteTemplate). The template's
// SQL is parsed by DuckDB into its syntax tree, and each $param of it is
// replaced on the tree by the value as a typed literal, CAST('text' AS
// type), after the value was checked against the parameter's declared
// type: a value never reaches SQL text. The bound tree is then checked as
// a template's (checkRoomWith): it reads custom-rule tables only, each
// table's owner approved the template, and under differential privacy it
// must pass the aggregation checks and is noised and charged as an
// aggregation is.

// ruleTemplate names the template rule in refusals.
const ruleTemplate = "approved templates"

// Kinds of template argument literals.
const (
	argString = iota + 1
	argNumber
	argBool
	argNull
)

// templateArg is one argument's literal as written.
type templateArg struct {
	kind int
	text string
}

// templateCall is a parsed EXECUTE TEMPLATE statement.
type templateCall struct {
	name string
	args map[string]templateArg
}

// MaxTemplateArgs bounds the arguments of one EXECUTE TEMPLATE.
const maxTemplateArgs = cleanroom.MaxTemplateParams

// parseExecuteTemplate recognises EXECUTE TEMPLATE name [(p => literal,
// ...)] [;]. ok is false when the statement is not one (it goes on to the
// other parsers); err is a syntax error (42601) for one that is malformed.
// It takes untrusted input.
func parseExecuteTemplate(sql string) (call templateCall, ok bool, err error) {
	s := skipSpace(sql)
	word := func() string {
		i := 0
		for i < len(s) && isIdentChar(s[i]) {
			i++
		}
		w := s[:i]
		s = skipSpace(s[i:])
		return w
	}
	if !strings.EqualFold(word(), "EXECUTE") || !strings.EqualFold(word(), "TEMPLATE") {
		return templateCall{}, false, nil
	}
	bad := syntaxError("EXECUTE TEMPLATE takes a template's name and its arguments: EXECUTE TEMPLATE name (param => 'value', ...)")
	if s == "" || !isIdentStart(s[0]) || s[0] >= 0x80 {
		return templateCall{}, true, bad
	}
	call = templateCall{name: strings.ToLower(word()), args: map[string]templateArg{}}
	if strings.HasPrefix(s, "(") {
		s = skipSpace(s[1:])
		for !strings.HasPrefix(s, ")") {
			if len(call.args) > 0 {
				if !strings.HasPrefix(s, ",") {
					return templateCall{}, true, bad
				}
				s = skipSpace(s[1:])
			}
			if s == "" || !isIdentStart(s[0]) || s[0] >= 0x80 {
				return templateCall{}, true, bad
			}
			name := strings.ToLower(word())
			if !strings.HasPrefix(s, "=>") {
				return templateCall{}, true, bad
			}
			s = skipSpace(s[2:])
			arg, rest, okLit := literalArg(s)
			if !okLit {
				return templateCall{}, true, syntaxError("EXECUTE TEMPLATE: the argument %s takes a literal: a 'string', a number, TRUE, FALSE or NULL", name)
			}
			if _, dup := call.args[name]; dup {
				return templateCall{}, true, syntaxError("EXECUTE TEMPLATE: the argument %s is given twice", name)
			}
			if len(call.args) >= maxTemplateArgs {
				return templateCall{}, true, syntaxError("EXECUTE TEMPLATE: at most %d arguments", maxTemplateArgs)
			}
			call.args[name] = arg
			s = skipSpace(rest)
		}
		s = skipSpace(s[1:])
	}
	s = strings.TrimPrefix(s, ";")
	if skipSpace(s) != "" {
		return templateCall{}, true, bad
	}
	return call, true, nil
}

// literalArg reads one literal at the start of s.
func literalArg(s string) (templateArg, string, bool) {
	switch {
	case s == "":
		return templateArg{}, s, false
	case s[0] == '\'':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return templateArg{kind: argString, text: b.String()}, s[i+1:], true
		}
		return templateArg{}, s, false
	case s[0] == '-' || s[0] == '+' || s[0] == '.' || s[0] >= '0' && s[0] <= '9':
		i := 1
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
			(s[i] == '-' || s[i] == '+') && (s[i-1] == 'e' || s[i-1] == 'E')) {
			i++
		}
		text := s[:i]
		if f, err := strconv.ParseFloat(text, 64); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return templateArg{}, s, false
		}
		return templateArg{kind: argNumber, text: text}, s[i:], true
	}
	i := 0
	for i < len(s) && isIdentChar(s[i]) {
		i++
	}
	switch w := strings.ToUpper(s[:i]); w {
	case "TRUE", "FALSE":
		return templateArg{kind: argBool, text: strings.ToLower(w)}, s[i:], true
	case "NULL":
		return templateArg{kind: argNull}, s[i:], true
	}
	return templateArg{}, s, false
}

// paramTypes are the DuckDB types of template parameters.
var paramTypes = map[string]string{
	cleanroom.ParamVarchar: "VARCHAR", cleanroom.ParamBigint: "BIGINT", cleanroom.ParamDouble: "DOUBLE",
	cleanroom.ParamBoolean: "BOOLEAN", cleanroom.ParamDate: "DATE",
}

// typedLiteral checks an argument against its parameter's type and
// returns it as a typed literal node: CAST('text' AS type), or CAST(NULL
// AS type).
func typedLiteral(p cleanroom.TemplateParam, a templateArg) (node, error) {
	wrong := func(want string) error {
		return &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: "EXECUTE TEMPLATE: the argument " + p.Name + " must be " + want}
	}
	typ, ok := paramTypes[p.Type]
	if !ok {
		return nil, wrong("of a known type")
	}
	lit := node{"kind": "STRING", "text": a.text}
	switch {
	case a.kind == argNull:
		lit = node{"kind": "NULL_LITERAL", "text": ""}
	case p.Type == cleanroom.ParamVarchar:
		if a.kind != argString {
			return nil, wrong("a 'string'")
		}
	case p.Type == cleanroom.ParamBigint:
		if _, err := strconv.ParseInt(a.text, 10, 64); a.kind != argNumber || err != nil {
			return nil, wrong("an integer (BIGINT)")
		}
	case p.Type == cleanroom.ParamDouble:
		if a.kind != argNumber {
			return nil, wrong("a number")
		}
	case p.Type == cleanroom.ParamBoolean:
		if a.kind != argBool {
			return nil, wrong("TRUE or FALSE")
		}
	case p.Type == cleanroom.ParamDate:
		if _, err := time.Parse(time.DateOnly, a.text); a.kind != argString || err != nil {
			return nil, wrong("a date 'YYYY-MM-DD'")
		}
	}
	return node{"class": "CAST", "type": "OPERATOR_CAST", "alias": "", "try_cast": false,
		"child": node{"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "literal": lit},
		"type_expr": node{"class": "TYPE", "type": "TYPE", "alias": "", "type_name": typ, "catalog": "", "schema": "",
			"children": []any{}, "qualified_name": node{"path": []any{typ}}},
	}, nil
}

// bindTemplate replaces every parameter of a template's tree with its
// argument as a typed literal. Every declared parameter must be given,
// and nothing else; a parameter the template does not declare ($1, ?,
// an unknown name) is refused.
func bindTemplate(stmt node, t *cleanroom.Template, args map[string]templateArg) error {
	params := map[string]cleanroom.TemplateParam{}
	for _, p := range t.Params {
		params[p.Name] = p
		if _, ok := args[p.Name]; !ok {
			return &pgwire.Error{Code: pgwire.CodeUndefinedParameter, Message: "EXECUTE TEMPLATE " + t.Name + ": the argument " + p.Name + " is missing"}
		}
	}
	for name := range args {
		if _, ok := params[name]; !ok {
			return &pgwire.Error{Code: pgwire.CodeUndefinedParameter, Message: "EXECUTE TEMPLATE " + t.Name + ": it has no parameter " + name}
		}
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case []any:
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		case node:
			if x["class"] == "PARAMETER" {
				id, _ := x["identifier"].(string)
				p, ok := params[strings.ToLower(id)]
				if !ok {
					return ruleError(ruleTemplate, "template %q uses a parameter it does not declare: templates take named parameters ($name) declared with their types", t.Name)
				}
				lit, err := typedLiteral(p, args[p.Name])
				if err != nil {
					return err
				}
				clear(x)
				for k, v := range lit {
					x[k] = v
				}
				return nil
			}
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(stmt); err != nil {
		return err
	}
	stmt["named_param_map"] = []any{}
	return nil
}

// templateTree fetches the template the session runs (the caller must be
// allowed to) and returns its tree with the arguments bound.
func (ss *session) templateTree(ctx context.Context, room string, call *templateCall) (node, *cleanroom.Template, []byte, error) {
	tmpl, err := ss.e.opts.CleanRooms.RunTemplate(ctx, ss.sub, room, call.name)
	if err != nil {
		return nil, nil, nil, roomRefusal(err)
	}
	stmt, err := ss.parseOne(ctx, tmpl.SQL)
	if err != nil {
		return nil, nil, nil, ruleError(ruleTemplate, "template %q does not parse as one statement", tmpl.Name)
	}
	if err := bindTemplate(stmt, &tmpl, call.args); err != nil {
		return nil, nil, nil, err
	}
	raw, err := json.Marshal(stmt)
	if err != nil {
		return nil, nil, nil, err
	}
	return stmt, &tmpl, raw, nil
}

// checkTemplateTables checks what a template reads: custom-rule tables
// only, each approved by its owner; under differential privacy each needs
// an identifier and a threshold.
func (c *roomCheck) checkTemplateTables(t *cleanroom.Template) error {
	if c.kind != cleanroom.RuleCustom {
		return ruleError(ruleTemplate, "template %q reads tables of the %s rule: templates read custom-rule tables only", t.Name, c.kind)
	}
	for _, rt := range c.tables {
		if !t.Approved(rt.t.Owner) {
			return ruleError(ruleTemplate, "template %q is not approved by %q, the owner of configured table %q", t.Name, rt.t.Owner, rt.t.Name)
		}
		if c.room.Collaboration.Privacy != nil && (rt.t.Identifier == "" || rt.t.Rule.MinIdentifiers < 2) {
			return ruleError(ruleDP, "configured table %q declares no identifier or min_identifiers: under differential privacy a template's tables need both", rt.t.Name)
		}
	}
	return nil
}
