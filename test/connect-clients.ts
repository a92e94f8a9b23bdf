// Connect clients for integration tests: the dashboard's service as a signed-in
// operator's browser calls it, and what a failed Connect call threw.
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "vitest";
import { DashboardService } from "../gen/keyhold/dashboard/v1/dashboard_service_pb.js";

/** Signs in at `base` (the dashboard's sign-in) and returns a DashboardService client sending its cookie, Origin and CSRF token. */
export async function signedInDashboard(base: string, email: string, password: string): Promise<Client<typeof DashboardService>> {
  const res = await fetch(`${base}/dashboard/api/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(200);
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] as string;
  const { csrfToken } = (await res.json()) as { csrfToken: string };
  const transport = createConnectTransport({
    httpVersion: "1.1",
    baseUrl: base,
    interceptors: [
      (next) => (req) => {
        req.header.set("cookie", cookie);
        req.header.set("origin", base);
        req.header.set("x-csrf-token", csrfToken);
        return next(req);
      },
    ],
  });
  return createClient(DashboardService, transport);
}

/** Awaits a call that must fail and returns its ConnectError. */
export async function connectError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    return err as ConnectError;
  }
  throw new Error("expected the call to fail");
}
