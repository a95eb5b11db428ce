import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = (doc: unknown) => string;

/**
 * Fastify's response serializer factory (fast-json-stringify, as Fastify's default), compiling each
 * distinct response schema once per set of shared schemas instead of once per route and status.
 * Fastify compiles a serializer for every route's every status (in every plugin context), and
 * fast-json-stringify validates each shared schema again on every compile: about 320 compiles of about
 * 80 distinct schemas over 67 shared components were two thirds of building the app, and so of every
 * server start. A serializer depends only on its schema, the shared schemas and the serializer options
 * (not on the route), so compiles equal in all three share one.
 */
export function sharedResponseSerializers(): SerializerFactory {
  const build = SerializerSelector();
  const bySharedSchemas = new Map<string, Map<string, Serializer>>();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const sharedKey = JSON.stringify([externalSchemas ?? null, options ?? null]);
    let compiled = bySharedSchemas.get(sharedKey);
    if (compiled === undefined) {
      compiled = new Map();
      bySharedSchemas.set(sharedKey, compiled);
    }
    const serializers = compiled;
    return (route) => {
      const key = JSON.stringify(route.schema);
      let serializer = serializers.get(key);
      if (serializer === undefined) {
        serializer = compile(route);
        serializers.set(key, serializer);
      }
      return serializer;
    };
  };
}
