// ResNet-50 conv shapes (batch 4 of 8x193x257 on a thread) in oneDNN, channels-last (nhwc) against the layout oneDNN picks (any: blocked), 1 thread, best of 5. Build: g++ -O2 cb.cpp -o cb -ldnnl
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
double run(engine& eng, stream& s, int N,int IC,int OC,int H,int W,int K,int S,int P, tag t, bool anyAct, bool print) {
  int OH=(H+2*P-K)/S+1, OW=(W+2*P-K)/S+1;
  memory::dims src{N,IC,H,W}, wei{OC,IC,K,K}, bia{OC}, dst{N,OC,OH,OW};
  auto sd = memory::desc(src, memory::data_type::f32, anyAct? tag::any : t);
  auto dd = memory::desc(dst, memory::data_type::f32, anyAct? tag::any : t);
  auto wd = memory::desc(wei, memory::data_type::f32, tag::any);
  auto bd = memory::desc(bia, memory::data_type::f32, tag::a);
  post_ops po; po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f); primitive_attr attr; attr.set_post_ops(po);
  auto d = convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, sd, wd, bd, dd, {S,S},{P,P},{P,P});
  auto pd = convolution_forward::primitive_desc(d, attr, eng);
  if (print) printf("  impl %s src %s\n", pd.impl_info_str(), anyAct? "any":"nhwc");
  memory ms(pd.src_desc(), eng), mw(pd.weights_desc(), eng), mb(bd, eng), md(pd.dst_desc(), eng);
  float* p=(float*)ms.get_data_handle(); for (size_t i=0;i<pd.src_desc().get_size()/4;i++) p[i]=(i%7)*0.1f;
  convolution_forward c(pd);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC,ms},{DNNL_ARG_WEIGHTS,mw},{DNNL_ARG_BIAS,mb},{DNNL_ARG_DST,md}};
  c.execute(s,args); s.wait();
  double best=1e9;
  for (int r=0;r<5;r++){auto t0=std::chrono::steady_clock::now(); c.execute(s,args); s.wait(); double ms_=std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t0).count(); if(ms_<best)best=ms_;}
  double gf = 2.0*N*OC*OH*OW*IC*K*K/1e9;
  printf("N%d IC%d OC%d %dx%d k%d s%d %-5s %8.2f ms %6.1f GFLOP/s\n",N,IC,OC,H,W,K,S,anyAct?"any":"nhwc",best,gf/best*1e3);
  return best;
}
int main(){
  engine eng(engine::kind::cpu,0); stream s(eng);
  struct L{int IC,OC,H,W,K,S,P;} ls[]={{3,64,193,257,7,2,3},{64,64,49,65,3,1,1},{64,64,49,65,1,1,0},{64,256,49,65,1,1,0},{256,64,49,65,1,1,0},{128,128,25,33,3,1,1},{256,256,13,17,3,1,1},{512,512,7,9,3,1,1},{1024,256,13,17,1,1,0}};
  for (auto l: ls) for (bool a: {false,true}) run(eng,s,4,l.IC,l.OC,l.H,l.W,l.K,l.S,l.P,tag::nhwc,a,true);
}
