package awsemulator

import (
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
