// google-protobuf ships no declarations; pb.ts narrows what the dev peer uses.
declare module "google-protobuf/google/protobuf/any_pb.js" {
  const module: unknown
  export default module
}
declare module "google-protobuf/google/protobuf/timestamp_pb.js" {
  const module: unknown
  export default module
}
