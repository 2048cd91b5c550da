public import HTTPTypes
public import Hummingbird
public import RelayClient

/// A refusal answers as the API documents it (docs/RELAY.md): the code's status, `{"error": <reason code>,
/// "message": ...}`, and `Retry-After` when the error says when to come back (429 and 503).
///
/// The conformance lives with the server so that `RelayClient` does not depend on Hummingbird.
extension RelayError: HTTPResponseError {
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: self.code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        self.response
    }

    /// The answer, for a route that adds headers of its own to every answer.
    var response: Response {
        var response = RelayRouter.json(
            self.status,
            RelayAPI.ErrorBody(error: self.code.rawValue, message: self.message)
        )
        if let seconds = self.retryAfterSeconds { response.headers[RelayRouter.retryAfter] = "\(seconds)" }
        return response
    }
}
