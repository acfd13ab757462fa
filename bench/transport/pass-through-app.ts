/**
 * The custom app of the transport bench's `rest-app` cells: a Hono app whose one middleware only
 * passes requests on, so the cells measure what mounting an `http.app` costs a built-in route.
 */
import { Hono } from "hono";

export const app = new Hono();

app.use(async (_c, next) => {
  await next();
});

app.get("/custom/ping", (c) => c.json({ pong: true }));
