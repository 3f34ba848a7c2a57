module github.com/oar-operator/oar-operator

go 1.26.0

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
