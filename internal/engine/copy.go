package engine

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// Copy is a rendered copy object ([OAR-COPY-2]): its members sorted by name, each name
// once. A decision's copy is built in this order from its rule's members, put in name
// order when the rule compiled, so neither the engine nor an encoder writing the
// object in encoding/json's key order hashes or sorts a name per evaluation, as a map
// made them do. It marshals and unmarshals as the map[string]string it stands for.
type Copy []CopyMember

// CopyMember is one member of a copy object: a name (title, what, …) and its text.
type CopyMember struct {
	Name string
	Text string
}

// CopyOf is the copy object holding the members of m; nil for a nil map.
func CopyOf(m map[string]string) Copy {
	if m == nil {
		return nil
	}
	c := make(Copy, 0, len(m))
	for name, text := range m {
		c = append(c, CopyMember{Name: name, Text: text})
	}
	slices.SortFunc(c, func(a, b CopyMember) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// Get returns the text of the member called name; "" when c has none, as a map
// would.
func (c Copy) Get(name string) string {
	if i, ok := slices.BinarySearchFunc(c, name, func(m CopyMember, name string) int {
		return strings.Compare(m.Name, name)
	}); ok {
		return c[i].Text
	}
	return ""
}

// Map is c as a map; nil for a nil c.
func (c Copy) Map() map[string]string {
	if c == nil {
		return nil
	}
	m := make(map[string]string, len(c))
	for _, member := range c {
		m[member.Name] = member.Text
	}
	return m
}

// MarshalJSON writes c as encoding/json writes the map[string]string of its members:
// null when nil, else an object in name order. It leaves '<', '>' and '&' as they are,
// as the map's encoding with HTML escaping off does: the encoder that calls it escapes
// them when its own HTML escaping is on, so both encoders' bytes are the map's.
func (c Copy) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	n := 2
	for _, m := range c {
		n += len(m.Name) + len(m.Text) + 6
	}
	return c.AppendObject(make([]byte, 0, n), codepoint.AppendEncodingJSON), nil
}

// AppendObject appends c as a JSON object, in its order, each name and text written by
// str: codepoint.AppendEncodingJSON for encoding/json's bytes, codepoint.AppendJSON for
// the engine's (a lone surrogate by its escape).
func (c Copy) AppendObject(b []byte, str func([]byte, string) []byte) []byte {
	b = append(b, '{')
	for i, m := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = str(b, m.Name)
		b = append(b, ':')
		b = str(b, m.Text)
	}
	return append(b, '}')
}

// UnmarshalJSON reads what a map[string]string reads, into c's members: null makes c
// nil, an object adds its members to c's, a name given twice taking the last text.
func (c *Copy) UnmarshalJSON(data []byte) error {
	m := c.Map()
	err := json.Unmarshal(data, &m)
	*c = CopyOf(m)
	return err
}
