package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// field is one member of a JSON object, in the server's order.
type field struct {
	key string
	val any // string, json.Number, bool, nil, []field (an object) or []any (an array)
}

// decodeOrdered reads one JSON value, keeping objects' members in order.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			var obj []field
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, field{k.(string), v})
			}
			_, err := dec.Token()
			return obj, err
		}
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

// printReadable prints an answer for a person: an object's members as
// aligned "key: value" lines (nested objects under dotted keys, lists of
// values joined, multi-line text indented below its key), and each list of
// objects as a table after them.
func printReadable(w io.Writer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	obj, ok := v.([]field)
	if !ok {
		_, err := fmt.Fprintln(w, scalar(v))
		return err
	}
	var lines []field
	var tables []field
	var flatten func(prefix string, obj []field)
	flatten = func(prefix string, obj []field) {
		for _, f := range obj {
			key := prefix + f.key
			switch val := f.val.(type) {
			case []field:
				if len(val) == 0 {
					lines = append(lines, field{key, "-"})
				}
				flatten(key+".", val)
			case []any:
				if isTable(val) {
					tables = append(tables, field{key, val})
					continue
				}
				lines = append(lines, field{key, joined(val)})
			default:
				lines = append(lines, field{key, scalar(val)})
			}
		}
	}
	flatten("", obj)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var long []field // multi-line text, after the aligned lines
	for _, l := range lines {
		s := l.val.(string)
		if strings.Contains(s, "\n") {
			long = append(long, l)
			continue
		}
		fmt.Fprintf(tw, "%s:\t%s\n", l.key, s)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range long {
		fmt.Fprintf(w, "%s:\n", l.key)
		for line := range strings.Lines(strings.TrimRight(l.val.(string), "\n")) {
			fmt.Fprintf(w, "    %s", line)
		}
		fmt.Fprintln(w)
	}
	for _, t := range tables {
		fmt.Fprintf(w, "\n%s:\n", t.key)
		if err := printObjects(w, t.val.([]any)); err != nil {
			return err
		}
	}
	return nil
}

// isTable reports whether a list holds objects.
func isTable(arr []any) bool {
	if len(arr) == 0 {
		return false
	}
	for _, v := range arr {
		if _, ok := v.([]field); !ok {
			return false
		}
	}
	return true
}

// printObjects prints a list of objects as a table, one column per key.
func printObjects(w io.Writer, arr []any) error {
	var cols []string
	seen := map[string]bool{}
	for _, v := range arr {
		for _, f := range v.([]field) {
			if !seen[f.key] {
				seen[f.key] = true
				cols = append(cols, f.key)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.ToUpper(strings.Join(cols, "\t")))
	for _, v := range arr {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = "-"
			for _, f := range v.([]field) {
				if f.key == c {
					row[i] = strings.ReplaceAll(cellValue(f.val), "\n", " ")
				}
			}
		}
		fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func cellValue(v any) string {
	switch val := v.(type) {
	case []any:
		return joined(val)
	case []field:
		var parts []string
		for _, f := range val {
			parts = append(parts, f.key+"="+cellValue(f.val))
		}
		return cell(strings.Join(parts, " "))
	}
	return scalar(v)
}

func joined(arr []any) string {
	parts := make([]string, len(arr))
	for i, v := range arr {
		parts[i] = cellValue(v)
	}
	return cell(strings.Join(parts, ", "))
}

func scalar(v any) string {
	switch val := v.(type) {
	case nil:
		return "-"
	case string:
		return cell(val)
	case json.Number:
		return val.String()
	case bool:
		if val {
			return "true"
		}
		return "false"
	}
	return fmt.Sprint(v)
}
