/** Implementations of the cross-cutting middleware of the contract (src/api/http.ts). */
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, errorBody, InternalError } from "../api/errors.ts"
import { ErrorEnvelope, JsonBodyFraming } from "../api/http.ts"
import { isJsonSyntaxIssue } from "../api/jsonBody.ts"
import { AppConfig } from "../config.ts"
import { BodyBudgetService } from "./body.ts"
import { readJsonText, withText } from "./framing.ts"
import { describeIssue } from "./schemaMessages.ts"

/** Reads the JSON body (size, media type, UTF-8) and hands it to the payload decoding as the request's text. */
export const JsonBodyFramingLayer = Layer.effect(
  JsonBodyFraming,
  Effect.map(Effect.all([AppConfig, BodyBudgetService]),
    ([config, budget]) =>
      JsonBodyFraming.of((httpEffect) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.flatMap(readJsonText(request, config.maxBodyBytes, budget), (text) =>
            Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, withText(request, text))))
      ))
)

/** A request that does not match the endpoint's schemas: 400 naming the field (INVALID_JSON when not JSON at all). */
export const ErrorEnvelopeLayer = HttpApiMiddleware.layerSchemaErrorTransform(ErrorEnvelope, (error) => {
  const issue = error.cause.issue
  // The response did not match its own schema: the node's fault, not the request's (500, logged).
  if (error.kind === "Body" || error.kind === "ResponseHeaders") {
    return Effect.andThen(
      Effect.logError("response does not match its schema", { kind: error.kind, issue: describeIssue(issue) }),
      Effect.fail(new InternalError(errorBody("INTERNAL_ERROR", "Internal error")))
    )
  }
  if (error.kind === "Payload") {
    return Effect.fail(new BadRequest(errorBody(isJsonSyntaxIssue(issue) ? "INVALID_JSON" : "VALIDATION_ERROR", describeIssue(issue))))
  }
  return Effect.fail(new BadRequest(errorBody("VALIDATION_ERROR", `Invalid request ${error.kind.toLowerCase()}: ${describeIssue(issue)}`)))
})
