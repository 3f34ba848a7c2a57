package engine

import (
	"encoding/json"
	"strconv"
)

func jsonInt(i int) json.Number { return json.Number(strconv.Itoa(i)) }
