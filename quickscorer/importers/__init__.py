"""One importer per source format, each writing the neutral :class:`~quickscorer.ir.Ensemble`
through :func:`~quickscorer.ir.build_tree` (which validates and renumbers every tree);
:func:`quickscorer.load` detects the format and calls one of them.

- ``lightgbm``: LightGBM text models (file, string, ``Booster``), parsed in C by
  ``_lgbtext``; ``lightgbm_dump``: its JSON dumps (``dump_model()``), read as the text model
  they stand for;
- ``xgboost``: XGBoost JSON and UBJSON models (file, bytes, dict, ``Booster``), JSON parsed
  in C by ``_xgbjson`` (both on the growable buffers of ``parse_buf.h``);
- ``ubjson``: a UBJSON decoder; ``xgboost_binary``: XGBoost's legacy binary format;
- ``xgboost_dump``: XGBoost's JSON dumps (``get_dump(dump_format="json")``);
- ``catboost``: CatBoost models (JSON export, ``.cbm``, model object): trees and features;
- ``catboost_cbm``: the ``.cbm`` file's FlatBuffers tables as the JSON export's document;
- ``catboost_features``: CatBoost's float, one-hot and CTR features (the neutral CTR stage);
- ``flatbuffers``: a FlatBuffers table reader;
- ``sklearn``: fitted scikit-learn tree estimators;
- ``ranklib``: RankLib's MART, LambdaMART and random-forest models (the text it saves);
- ``solr``: Solr LTR's ``MultipleAdditiveTreesModel`` JSON; ``json_document``: what the
  JSON formats' readers share;
- ``onnx``: ONNX tree ensembles; ``onnx_graph``: the graph around them (input, output path);
- ``protobuf``: a protocol-buffers decoder of the ONNX messages;
- ``model_file``: a model file's bytes, mapped, for every importer.
"""
