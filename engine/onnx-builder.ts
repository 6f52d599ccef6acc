// A small builder for ONNX graphs (onnx-proto): inputs, outputs, initializers and nodes with readable names.
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
export type TensorProto = onnxProto.onnx.ITensorProto;
export const DataType = onnx.TensorProto.DataType;

export type Attribute = { i: number } | { f: number } | { ints: number[] } | { s: string };
export type Dim = number | string;

const MS_DOMAIN = 'com.microsoft';

export class GraphBuilder {
  private readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private readonly inputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly outputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly initializers: TensorProto[] = [];
  private readonly used = new Set<string>();
  private counter = 0;

  input(name: string, type: number, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    return name;
  }

  /** Declare `value` (an existing value) as a graph output named `name`. */
  output(name: string, value: string, type: number, dims: Dim[]): void {
    if (name !== value) this.op('Identity', [value], {}, { outputs: [name] });
    this.outputs.push(valueInfo(name, type, dims));
  }

  initializer(tensor: TensorProto): string {
    this.initializers.push(tensor);
    return tensor.name!;
  }

  constFloat(values: ArrayLike<number>, dims: number[], hint: string): string {
    const name = this.fresh(hint);
    return this.initializer({
      name,
      dims,
      dataType: DataType.FLOAT,
      rawData: new Uint8Array(Float32Array.from(values).buffer),
    });
  }

  constInt64(values: number[], dims: number[] | undefined, hint: string): string {
    const name = this.fresh(hint);
    return this.initializer({
      name,
      dims: dims ?? [values.length],
      dataType: DataType.INT64,
      rawData: new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer),
    });
  }

  /** A scalar int32 constant. */
  constInt32(values: number[], hint: string): string {
    const name = this.fresh(hint);
    return this.initializer({
      name,
      dims: [],
      dataType: DataType.INT32,
      rawData: new Uint8Array(Int32Array.from(values).buffer),
    });
  }

  /** Add a node; returns its output names. */
  op(
    opType: string,
    inputs: string[],
    attributes: Record<string, Attribute> = {},
    options: { outputs?: string[] | number; domain?: string } = {},
  ): string[] {
    const outputs = Array.isArray(options.outputs)
      ? options.outputs
      : Array.from({ length: options.outputs ?? 1 }, () => this.fresh(opType));
    this.nodes.push({
      opType,
      domain: options.domain ?? '',
      name: this.fresh(`node_${opType}`),
      input: inputs,
      output: outputs,
      attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
    });
    return outputs;
  }

  /** A single-output node. */
  one(opType: string, inputs: string[], attributes: Record<string, Attribute> = {}, domain?: string): string {
    return this.op(opType, inputs, attributes, { domain })[0]!;
  }

  /** y = a @ bᵀ for b stored [out, in] (Linear weights), without materialising the transpose. */
  matMulTransB(a: string, b: string, attributes: Record<string, Attribute> = {}): string {
    return this.one('FusedMatMul', [a, b], { transB: { i: 1 }, ...attributes }, MS_DOMAIN);
  }

  fresh(hint: string): string {
    let name: string;
    do name = `${hint.replace(/[^A-Za-z0-9_.]/g, '_')}_${this.counter++}`;
    while (this.used.has(name));
    this.used.add(name);
    return name;
  }

  toBytes(graphName: string, opset = 17): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: opset >= 23 ? 11 : 8, // opset 23 needs IR version 11
      producerName: 'iwibench-ts',
      opsetImport: [
        { domain: '', version: opset },
        { domain: MS_DOMAIN, version: 1 },
      ],
      graph: {
        name: graphName,
        node: this.nodes,
        input: this.inputs,
        output: this.outputs,
        initializer: this.initializers,
      },
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function valueInfo(name: string, type: number, dims: Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: type,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: Attribute): onnxProto.onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if ('i' in value) return { name, type: T.INT, i: value.i };
  if ('f' in value) return { name, type: T.FLOAT, f: value.f };
  if ('ints' in value) return { name, type: T.INTS, ints: value.ints };
  return { name, type: T.STRING, s: new TextEncoder().encode(value.s) };
}
