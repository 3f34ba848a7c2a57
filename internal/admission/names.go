package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/oar-operator/oar-operator/internal/resource"
)

// capabilityNameMax is the longest Capability name a bundle can be published for: the
// controller labels the bundle ConfigMap with the name (resource.CapabilityLabel), and a
// label value holds at most this many characters. A longer name would be admitted and
// never published, with nothing to say why.
const capabilityNameMax = validation.LabelValueMaxLength

// capabilityNameErrors refuses a Capability name, at path, no bundle can be published for.
func capabilityNameErrors(path, name string) field.ErrorList {
	if len(name) <= capabilityNameMax {
		return nil
	}
	return field.ErrorList{{Type: field.ErrorTypeTooLong, Field: path, BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("a Capability name must be at most %d characters, not %d: the controller labels the Capability's bundle ConfigMap %s=<name>, and a label value holds at most %d",
			capabilityNameMax, len(name), resource.CapabilityLabel, capabilityNameMax)}}
}
