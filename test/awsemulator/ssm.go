package awsemulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// SSM and Pricing speak awsJson1_1: X-Amz-Target names the operation, bodies are JSON and
// errors name their type in __type.
const json11ContentType = "application/x-amz-json-1.1"

func writeJSON11Error(w http.ResponseWriter, _ *request, aerr *apiError) {
	w.Header().Set("Content-Type", json11ContentType)
	w.Header().Set("X-Amzn-ErrorType", aerr.code)
	w.WriteHeader(aerr.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": aerr.code, "message": aerr.message})
}

// serveJSON11 decodes the request into In and, holding e.mu, answers what op returns.
func serveJSON11[In any](e *Emulator, w http.ResponseWriter, req *request, op func(In, time.Time) (any, *apiError)) *apiError {
	var in In
	if err := json.Unmarshal(req.body, &in); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "SerializationException", message: fmt.Sprintf("malformed request body: %v", err)}
	}
	e.mu.Lock()
	out, aerr := op(in, e.advance())
	e.mu.Unlock()
	if aerr != nil {
		return aerr
	}
	writeJSON(w, json11ContentType, out)
	return nil
}

// eksOptimizedAMIVersions are the Kubernetes minor versions whose EKS-optimized AMI
// parameters the emulator publishes.
var eksOptimizedAMIVersions = []string{"1.30", "1.31", "1.32", "1.33", "1.34", "1.35"}

// eksOptimizedAMIVariants are the parameter paths below /aws/service/eks/optimized-ami/<minor>/.
var eksOptimizedAMIVariants = []string{
	"amazon-linux-2023/x86_64/standard/recommended/image_id",
	"amazon-linux-2023/arm64/standard/recommended/image_id",
	"amazon-linux-2023/x86_64/nvidia/recommended/image_id",
	"amazon-linux-2023/arm64/nvidia/recommended/image_id",
	"amazon-linux-2/recommended/image_id",
	"amazon-linux-2-arm64/recommended/image_id",
	"amazon-linux-2-gpu/recommended/image_id",
}

// defaultSSMParameters are the public EKS-optimized AMI parameters of a region, each naming
// a deterministic AMI id derived from the region and the parameter's name.
func defaultSSMParameters(region string) map[string]string {
	out := map[string]string{}
	for _, v := range eksOptimizedAMIVersions {
		for _, variant := range eksOptimizedAMIVariants {
			name := "/aws/service/eks/optimized-ami/" + v + "/" + variant
			sum := sha256.Sum256([]byte(region + name))
			out[name] = "ami-" + hex.EncodeToString(sum[:])[:17]
		}
	}
	return out
}

type ssmGetParameterInput struct {
	Name           string `json:"Name"`
	WithDecryption bool   `json:"WithDecryption"`
}

func (e *Emulator) serveSSM(w http.ResponseWriter, req *request) *apiError {
	switch req.action {
	case "GetParameter":
		return serveJSON11(e, w, req, e.getParameter)
	default:
		return &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", message: fmt.Sprintf("%s is not an SSM operation this emulator serves", req.action)}
	}
}

func (e *Emulator) getParameter(in ssmGetParameterInput, _ time.Time) (any, *apiError) {
	name := in.Name
	// A parameter may be asked for by ARN.
	if _, path, ok := strings.Cut(name, ":parameter"); ok && strings.HasPrefix(name, "arn:") {
		name = path
	}
	value, ok := e.ssmParameters[name]
	if !ok {
		return nil, &apiError{status: http.StatusBadRequest, code: "ParameterNotFound", message: fmt.Sprintf("Parameter %s not found.", in.Name)}
	}
	type parameter struct {
		ARN              string  `json:"ARN"`
		DataType         string  `json:"DataType"`
		LastModifiedDate float64 `json:"LastModifiedDate"`
		Name             string  `json:"Name"`
		Type             string  `json:"Type"`
		Value            string  `json:"Value"`
		Version          int64   `json:"Version"`
	}
	dataType := "text"
	if strings.HasPrefix(value, "ami-") {
		dataType = "aws:ec2:image"
	}
	return map[string]parameter{"Parameter": {
		ARN:      fmt.Sprintf("arn:aws:ssm:%s::parameter%s", e.opts.Region, name),
		DataType: dataType, LastModifiedDate: float64(e.started.Unix()), Name: name, Type: "String", Value: value, Version: 1,
	}}, nil
}
